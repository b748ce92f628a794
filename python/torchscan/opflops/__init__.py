"""Machinery of the operator-FLOPs view: classification, built-in formulas and the dispatch mode.

The public API is :mod:`torchscan.flops`. These modules import torch at import time, so
:mod:`torchscan.flops` imports them only when a counter starts.
"""
