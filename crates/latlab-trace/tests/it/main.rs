//! Integration tests of latlab-trace: captured fixtures and a live capture.

mod fixture;
mod live;
mod records;
