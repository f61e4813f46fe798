-- The IANA zone a schedule's HH:MM are in: the page's zone (the owner's phone) when it was added
-- there, NULL for the box's own zone (TZ, else /etc/localtime). A window keeps its wall-clock
-- times in that zone across daylight saving time.
ALTER TABLE schedules ADD COLUMN zone TEXT;
