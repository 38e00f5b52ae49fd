//! What is acknowledged survives: crashes, full disks, snapshots and the PostgreSQL journal.

mod crash;
mod disk_failure;
mod postgres_journal;
mod restarts;
mod snapshots;
