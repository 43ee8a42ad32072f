-- 065: where a controller or hybrid serves NodeClusterService (host:port), for messages to the actors it holds
-- (TellActor, docs/CLUSTER.md "Messages to actors"). A worker's row already says it in grpc_address (its
-- RegisterNodeRequest.grpc_address is its cluster address); a controller's grpc_address is its runtime gRPC address,
-- so its cluster address needs a column of its own. NULL: a node started before this migration (no messages to it;
-- the slow row polling still moves its runs). Never edit once committed; append a new file instead.
ALTER TABLE cluster_nodes ADD COLUMN cluster_address TEXT;
