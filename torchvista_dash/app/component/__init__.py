"""The ModelGraph component: its Dash layout, its pattern-matching ids, the callbacks wired to them."""
