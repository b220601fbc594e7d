-- A session.Observation's hook events (kind 'events'), as their own JSON
-- column: no longer carried as text in `why`.
ALTER TABLE nightwatch_observations ADD COLUMN events jsonb;
