"""Evidence beside every number: what is watched over the measured window of a trial (METHODS
S1, S2, S4: "taking the number is not enough"). Each monitor is a module of this package
registered in :mod:`teiten.monitors.registry`; :mod:`teiten.monitors.base` says what one is."""
