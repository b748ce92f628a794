"""Measurement of a real workload: the layer between the command line and the analysis.

``workload`` (``measure_workload``) runs its passes (``pipeline``): timing in blocks
(``timing``), the machine's noise meanwhile (``noise``), the profiler (``profiling``), the
hardware peak (``peak``), the ranks of a ``torchrun`` job (``ranks``) and the process RSS in a
child of its own (``rss``); ``experiment`` compares two workloads with an output check
(``output_check``) and a verdict. It uses the analysis (operator FLOPs, tensor memory), the
report types and the compiled core, never the command line. The public names are exported by
``torchscan`` itself.
"""
