-- A token that can only read (Prometheus, dashboards); tokens made before stay admin.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'admin' CHECK (scope IN ('read', 'admin'));
