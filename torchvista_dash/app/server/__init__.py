"""Apps that host ModelGraphs: a single trace, the gallery, any registered trace by URL; notebooks' show()."""
