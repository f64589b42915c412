"""From a study's results (teiten.model.results, gathered in inputs.StudyData) to the figures a
report shows (model.ReportData). Analysis imports nothing of report/: renderers consume its
model, never the reverse."""
