"""The data model: the typed graph every source produces, the checks it must pass, options and costs."""
