"""The verdict mutation suite: passing conversations of every case kind, mutated with labelled agent and user
faults, run through ``simulator.run`` and classified (false passes, blame put on the wrong party, unsure)."""
