"""A consistency checker for Kafka-compatible clusters, in the manner of Jepsen's Kafka workload.

Workloads (`workloads`) drive a cluster with pylog's own clients and write every operation to a
history (`history`) as it happens; a fault scheduler (`faults`) kills, pauses and restarts brokers
meanwhile; the analysis (`analysis` and its companions) reads a history back and names every
anomaly with the operations that show it; `report` renders the results as text, JSON and HTML.
"""
