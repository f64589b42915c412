-- The sensor records: one row per time step and device, in time order (every device's record
-- of one step, then the next step), as a feed would deliver them. {steps} steps {interval} s
-- apart from {start} (epoch seconds), {devices} devices. {values} is the select list, over
-- device_id, ts, epoch (ts as epoch seconds) and the sensor values; put INSERT INTO ... before
-- it to load them (the values are computed right under the INSERT, without a subquery level).
-- Run SELECT setseed(...) first, in the same session: the same seed gives the same rows.
--
-- Each value is computed at the coarsest level it depends on, because per-record work is what
-- a load of millions of records pays for (bench/iot_load.py measures it):
--   dev   once per device: home position, offsets to the regional climate, radio level;
--   st    once per time step: the regional climate (season, time of day, weather systems), the
--         wind direction, the battery cycle, radio fading and the position's drift, shared by
--         every device and rounded to the sensors' resolution;
--   s     per record: the step's value plus the device's offset (one addition and a cast to
--         real per value), and temperature noise.
-- Sums of values already rounded to 0.1 (or 0.01) stay on that grid once cast to real, so no
-- record is rounded. The devices come from a LATERAL subquery that cannot be flattened
-- (OFFSET 0): the steps are the outer side of the join, which gives time order without a sort.
WITH dev AS MATERIALIZED (
    SELECT id AS device_id,
           31 + 12 * random() AS lat0,                             -- Kyushu to Hokkaido
           130 + 12 * random() AS lon0,
           round((-0.9 * (lat0 - 35) + 2 * random() - 1.2) * 10) / 10 AS temp_off,  -- cooler north
           round((10 * random() - 5) * 10) / 10 AS humidity_off,
           round(-15 * random() * 10) / 10 AS pressure_off,        -- altitude
           round(3 * random() * 10) / 10 AS wind_off,
           round(-20 * random()) / 100 AS battery_off,             -- an older battery holds less
           (-105 + 40 * random())::smallint AS signal0
    FROM (SELECT id, 31 + 12 * random() AS lat0 FROM generate_series(1, {devices}) AS id) AS d
)
SELECT {values}
FROM (
    SELECT to_timestamp({start} + t) AS ts,
           {start} + t AS epoch,
           0.01 * sin(t * (2 * pi() / 604800)) AS drift_lat,                -- a weekly loop of 2 km
           0.012 * cos(t * (2 * pi() / 604800)) AS drift_lon,
           round((15.5 + 10.5 * season + 3.5 * daily + 2 * weather) * 10) / 10 AS region_temperature,
           round((64 + 6 * season - 9 * daily - 6 * weather + 4 * damp) * 10) / 10 AS region_humidity,
           round((1012 - 3 * season + 8 * weather) * 10) / 10 AS region_pressure,
           round((2 - weather + 1.5 * random()) * 10) / 10 AS region_wind,                   -- gusts
           ((232 + 83 * season + 40 * weather + 30 * random())::integer % 360)::smallint
               AS wind_direction,                                                             -- NW in winter
           round((4.15 - 0.9 * (t / 1814400 - floor(t / 1814400))) * 100) / 100 AS region_battery,
           (8 * random() - 4)::smallint AS radio                                             -- fading
    FROM (
        SELECT t,
               -cos((t - 25 * 86400) * (2 * pi() / 31557600)) AS season,   -- coldest in late January
               cos((t - 5 * 3600) * (2 * pi() / 86400)) AS daily,           -- warmest at 14:00 in Japan
               sin(t * (2 * pi() / 371520)) + 0.5 * sin(t * (2 * pi() / 1010880) + 1) AS weather,
               sin(t * (2 * pi() / 250560) + 2) AS damp
        FROM (SELECT i * {interval}::double precision AS t
              FROM generate_series(0, {steps} - 1) AS i) AS g
        OFFSET 0
    ) AS c
    OFFSET 0
) AS st
CROSS JOIN LATERAL (
    SELECT d.device_id,
           (d.lat0 + st.drift_lat)::real AS latitude,
           (d.lon0 + st.drift_lon)::real AS longitude,
           (st.region_temperature + d.temp_off + 0.1 * floor(5 * random()))::real AS temperature,
           (st.region_humidity + d.humidity_off)::real AS humidity,
           (st.region_pressure + d.pressure_off)::real AS pressure,
           (st.region_wind + d.wind_off)::real AS wind_speed,
           (st.region_battery + d.battery_off)::real AS battery,
           d.signal0 + st.radio AS signal
    FROM dev AS d
    OFFSET 0
) AS s
