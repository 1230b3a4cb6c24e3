"""Per-trace state on the server: the registry, what each view derives (layouts, figures, pictures), the page
state and background work."""
