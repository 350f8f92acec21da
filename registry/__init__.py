"""pylog's schema registry: Confluent's REST API over the `_schemas` topic.

    store.py      the topic, read and written with pylog's client
    state.py      the records applied in log order (who wins a race)
    registry.py   registering, looking up, deleting, config and mode
    compat*.py    compatibility levels and the checkers per schema type
    routes.py     the REST paths; http.py the listeners; service.py all of it
"""
