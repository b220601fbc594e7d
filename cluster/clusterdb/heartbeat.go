package clusterdb

import "time"

// HeartbeatInterval is how often a running `nightwatch worker` records its
// heartbeat (Heartbeat).
const HeartbeatInterval = 2 * time.Second

// StaleAfter is the age after which a heartbeat says its worker is gone
// (it died, or lost the database): three intervals missed.
const StaleAfter = 3 * HeartbeatInterval
