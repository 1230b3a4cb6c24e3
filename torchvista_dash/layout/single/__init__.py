"""One dot run over a whole view: the DOT it is given and the JSON it answers, read into a Layout."""
