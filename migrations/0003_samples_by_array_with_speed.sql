-- The samples endpoint picks each chart bucket's slowest and fastest sample; with speed_kb_s in
-- the index it reads only the index, not every row of a month of 5 s samples.
-- Same leading columns as before, so every (array, ts) lookup still uses it.
DROP INDEX samples_by_array;
CREATE INDEX samples_by_array ON samples(array, ts, speed_kb_s);
