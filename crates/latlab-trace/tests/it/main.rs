//! Integration tests of latlab-trace: captured fixtures and live captures.

mod attribute_live;
mod fixture;
mod live;
mod records;
