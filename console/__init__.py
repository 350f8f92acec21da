"""pylog.console: a web console for pylog's broker and any Kafka cluster.

A Kafka client (pylog's admin, consumer and producer) reads the cluster's state and
answers JSON under /api/; one static page (console/static: HTML, JavaScript and the
vendored uPlot charts library, no build step, no network at run time) draws it.

    from pylog.console.service import ConsoleService
    svc = ConsoleService({"bootstrap.servers": "127.0.0.1:9092"}, "127.0.0.1", 8080)
    svc.start()      # serves on its own thread; svc.url
    svc.stop()

`pylog console` runs it against any cluster; `pylog broker start --console HOST:PORT`
serves it from the broker, where it also charts the broker's metrics, shows the
share-partitions' in-flight records and reads the broker's log dirs. Writes (create,
alter and delete topics, produce, offset resets, aborts) are refused unless allowed.
"""
