"""matbench: semantic materialization in sparse KV-cache serving.

Data flows one way: suite rows -> donor pairs -> EventCache -> serving -> readouts ->
evaluators -> results.
"""

__version__ = "0.1.0"
