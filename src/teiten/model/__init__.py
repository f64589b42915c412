"""The model at the bottom: what a study produced (results), what it was asked to do (studyrecord),
and the errors every layer raises (errors). This wing imports nothing of teiten's but itself, so
every other wing may read and write it."""
