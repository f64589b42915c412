"""Running a study: its plan (plan), the checks before it (check, leftovers, estimate), the lock
of the machine (runlock), the clock of its budget (runclock), the record of the machine and
servers (record), each trial's window (window), the blocks of a study with repetitions: auto
(blocks), the busy watch (busy), and the runner that drives them (runner). Only the CLI imports
this wing."""
