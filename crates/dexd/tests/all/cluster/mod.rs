//! The cluster: nodes on one PostgreSQL journal, forwarding, takeover and the cluster script.

mod cluster_custody;
mod cluster_forwarding;
mod cluster_markets;
mod cluster_script;
mod cluster_takeover;
mod cluster_twap;
