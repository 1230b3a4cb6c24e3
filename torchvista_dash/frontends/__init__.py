"""Sources of a Graph: each folder turns something a user has (a live model, a saved program) into the same
typed Graph."""
