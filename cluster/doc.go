// Package cluster is one night over several hosts on a shared Postgres:
// the batch's cluster: section turns `nightwatch run` into the night's
// coordinator and `nightwatch worker` into the hosts that run its attempts.
// Without a cluster: section nothing here is used and the local files stay
// the embedded default.
//
//	cluster/clusterdb   the connection, the schema (River's and nightwatch's), its migrations
//	cluster/healthsync  shared health: the health table <-> every host's cache file, cross-host claims
//	cluster/queue       attempts as River jobs: the coordinator's side and the worker's
package cluster
