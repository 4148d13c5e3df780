//! serviceCIDR and exposure virtual IPs. DESIGN.md §2 "an unpinned serviceCIDR takes the
//! next free /24" and §3 (the pinned `VPNGateway.spec.serviceCIDR`, the pinned
//! `exposures[].virtualIP`):
//! - serviceCIDR: `spec.serviceCIDR` if set (VPNGateway), else what `status.serviceCIDR`
//!   already says, else the first /24 of the pool no existing gateway uses;
//! - virtual IPs: `exposures[].virtualIP` if set, else the address status already reports
//!   for that name (if inside the CIDR), else the next free host from `.10` up.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};
use vpnmig::core::model::{Exposure, ExposureStatus};

/// The first host offset handed out for virtual IPs (`10.250.3.10`).
const FIRST_VIP: u128 = 10;

/// Parse a CIDR leniently (the network of `10.250.3.7/24` is `10.250.3.0/24`).
pub fn parse(cidr: &str) -> Option<IpNet> {
    cidr.parse::<IpNet>().ok().map(|n| n.trunc())
}

/// The first /24 of `pool` that is not in `in_use`.
pub fn next_free_24(pool: &str, in_use: &BTreeSet<IpNet>) -> Option<IpNet> {
    let pool: Ipv4Net = pool.parse().ok()?;
    pool.trunc()
        .subnets(24)
        .ok()?
        .map(IpNet::V4)
        .find(|n| !in_use.iter().any(|u| u.contains(n) || n.contains(u)))
}

fn nth(net: IpNet, n: u128) -> Option<IpAddr> {
    match net {
        IpNet::V4(v4) => {
            let size = 1u128 << (32 - v4.prefix_len());
            (n < size.saturating_sub(1))
                .then(|| IpAddr::V4((u32::from(v4.network()) + n as u32).into()))
        }
        IpNet::V6(v6) => {
            let bits = 128 - u32::from(v6.prefix_len());
            let size = if bits >= 128 {
                u128::MAX
            } else {
                1u128 << bits
            };
            (n < size.saturating_sub(1)).then(|| IpAddr::V6((u128::from(v6.network()) + n).into()))
        }
    }
}

/// The virtual IP of every exposure, in spec order.
pub fn virtual_ips(
    cidr: Option<IpNet>,
    exposures: &[Exposure],
    status: &[ExposureStatus],
) -> Vec<ExposureStatus> {
    let mut used: BTreeSet<IpAddr> = exposures
        .iter()
        .filter_map(|e| e.virtual_ip.as_deref()?.parse().ok())
        .collect();
    let mut next = FIRST_VIP;
    let mut out = Vec::new();
    for e in exposures {
        let vip = if let Some(v) = e.virtual_ip.clone().filter(|v| !v.is_empty()) {
            Some(v)
        } else if let Some(prev) = status
            .iter()
            .find(|s| s.name == e.name)
            .and_then(|s| s.virtual_ip.as_deref()?.parse::<IpAddr>().ok())
            .filter(|ip| cidr.is_some_and(|c| c.contains(ip)) && !used.contains(ip))
        {
            used.insert(prev);
            Some(prev.to_string())
        } else if let Some(c) = cidr {
            let mut found = None;
            while let Some(ip) = nth(c, next) {
                next += 1;
                if used.insert(ip) {
                    found = Some(ip.to_string());
                    break;
                }
            }
            found
        } else {
            None
        };
        out.push(ExposureStatus {
            name: e.name.clone(),
            virtual_ip: vip,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(name: &str, vip: Option<&str>) -> Exposure {
        Exposure {
            name: name.into(),
            virtual_ip: vip.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn next_free_skips_used_and_overlapping() {
        let used: BTreeSet<IpNet> = ["10.250.0.0/24", "10.250.1.0/24", "10.250.3.0/25"]
            .iter()
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(
            next_free_24("10.250.0.0/16", &used).unwrap().to_string(),
            "10.250.2.0/24"
        );
        let all: BTreeSet<IpNet> = ["10.250.0.0/23"]
            .iter()
            .map(|c| c.parse().unwrap())
            .collect();
        assert_eq!(next_free_24("10.250.0.0/23", &all), None);
    }

    #[test]
    fn vips_keep_spec_and_status_and_fill_from_ten() {
        let cidr = parse("10.250.3.0/24");
        let status = vec![ExposureStatus {
            name: "b".into(),
            virtual_ip: Some("10.250.3.42".into()),
        }];
        let got = virtual_ips(
            cidr,
            &[
                exp("a", Some("10.250.3.10")),
                exp("b", None),
                exp("c", None),
            ],
            &status,
        );
        let ips: Vec<_> = got.iter().map(|s| s.virtual_ip.clone().unwrap()).collect();
        assert_eq!(ips, ["10.250.3.10", "10.250.3.42", "10.250.3.11"]);
    }
}
