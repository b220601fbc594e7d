-- Who ended an attempt: 'worker' (the worker that ran it delivered its
-- end) or 'coordinator' (a crash verdict, an abandon before it started).
-- A worker stops a session whose attempt the coordinator ended meanwhile.
ALTER TABLE nightwatch_attempts ADD COLUMN ended_by text;
