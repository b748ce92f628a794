"""The process-RSS pass: a workload measured in a child process of its own.

``parent`` starts and watches the child (``measure_process_rss``); ``supervisor`` runs between
them, by path and on the standard library alone, so that nothing the child starts survives it,
and holds the one reader of ``/proc/<pid>/stat``; ``worker`` is the child itself
(``python -m torchscan.measure.rss.worker``).
"""
