"""Qt views: thin widgets over core objects."""
