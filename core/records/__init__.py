"""Kafka record formats: RecordBatch v2, legacy message sets v0/v1, codecs.

No I/O here: everything works on bytes, bytearrays and memoryviews.
"""
