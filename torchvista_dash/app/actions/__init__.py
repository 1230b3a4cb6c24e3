"""What a click, a zoom or a search does: the next view and the outputs that show it, worked out without
Dash's wiring."""
