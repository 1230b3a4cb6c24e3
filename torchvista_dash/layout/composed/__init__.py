"""Layout by module: each open call's interior laid out on its own, the pieces composed into one Layout."""
