"""How teiten's figures and verdicts read, for people (in English and Japanese) and for the tools
that track them: numbers as the reports print them (formats), the catalogue's words for a study
(i18n), what a figure's words depend on (context), a verdict's sentence and marks (verdicts),
the report's answer (answer), ``teiten gate``'s summary (gate), and the point summaries in
Bencher's and OpenMetrics' formats (metric_formats). The report and the commands that only
decide (gate, bisect, store summarize) both word their figures from here, so a number reads the
same wherever it appears; nothing here decides."""
