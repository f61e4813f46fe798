-- The address the owner opened mdboost at when they added (or last tested) a destination: the
-- link in queued messages when MDBOOST_PUBLIC_URL is unset, not the box's host name,
-- which a phone on the LAN often cannot resolve.
ALTER TABLE notify_destinations ADD COLUMN page_url TEXT;
