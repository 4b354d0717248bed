"""Command-line tools: `python -m mixnet.tools.launch` starts a data-parallel job with MPI."""
