"""Running Graphviz: finding the programs, admitting runs to the cores, kept-running dot processes, streamed
output."""
