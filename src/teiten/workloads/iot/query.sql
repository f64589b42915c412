-- The most recent days of the data, per device: the same question in every model. {device},
-- {temperature} and {ts} are the model's expressions for them; {since} is a constant (the end
-- of the period minus the days asked for), written in the type of {ts} so the index applies.
SELECT {device} AS device_id, count(*) AS records, avg({temperature}) AS avg_temperature
FROM {table}
WHERE {ts} >= {since}
GROUP BY 1
ORDER BY 1
