"""HTTP plumbing any app hosting a ModelGraph needs: the picture route, gzip of answers, the request guard."""
