"""Bytes to the model: a file read under the memory budget (source, budget, heap), decoded (decode; the C scanner
in scanner/), built into ranks (build), streamed (stream_decode), a folder of ranks loaded (load)."""
