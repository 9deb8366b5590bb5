//! What the egress proxy adds to a connection: TCP setup plus one small HTTP
//! request and its response, straight to a loopback host versus through the
//! proxy (plain HTTP, and a CONNECT tunnel). Ends with one summary line from
//! interleaved rounds, so machine noise hits all three alike.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use praxis_egress::{Destination, Egress, Limits, Permit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

/// The stand-in for another host: answers one request per connection.
async fn host() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(RESPONSE).await;
            });
        }
    });
    addr
}

async fn proxy(host: SocketAddr) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let permit = Permit::new(
        vec![Destination::new(host.ip().to_string(), host.port())],
        vec![],
    )
    .unwrap()
    .with_loopback_ports([host.port()]);
    let egress = Egress::new(Limits::default(), None, vec![]).unwrap();
    tokio::spawn(async move {
        let _ = egress.serve(listener, permit, |_| {}).await;
    });
    addr
}

async fn finish(mut stream: TcpStream, request: &[u8]) {
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
}

async fn direct(host: SocketAddr) {
    let request = format!("GET /x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    finish(TcpStream::connect(host).await.unwrap(), request.as_bytes()).await;
}

async fn plain(proxy: SocketAddr, host: SocketAddr) {
    let request =
        format!("GET http://{host}/x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    finish(TcpStream::connect(proxy).await.unwrap(), request.as_bytes()).await;
}

async fn connect(proxy: SocketAddr, host: SocketAddr) {
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let ask = format!("CONNECT {host} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    stream.write_all(ask.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1);
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    let request = format!("GET /x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    finish(stream, request.as_bytes()).await;
}

fn setup() -> (Runtime, SocketAddr, SocketAddr) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (host, proxy) = rt.block_on(async {
        let host = host().await;
        (host, proxy(host).await)
    });
    (rt, host, proxy)
}

fn bench_egress(c: &mut Criterion) {
    let (rt, host, proxy) = setup();
    let mut group = c.benchmark_group("egress");
    group.bench_function("direct_connect_get", |b| {
        b.iter(|| rt.block_on(direct(host)))
    });
    group.bench_function("proxy_plain_http_get", |b| {
        b.iter(|| rt.block_on(plain(proxy, host)))
    });
    group.bench_function("proxy_connect_tunnel_get", |b| {
        b.iter(|| rt.block_on(connect(proxy, host)))
    });
    group.finish();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn timed(rt: &Runtime, run: impl std::future::Future<Output = ()>) -> Duration {
    let start = Instant::now();
    rt.block_on(run);
    start.elapsed()
}

fn summary() {
    let (rt, host, proxy) = setup();
    let rounds = 500;
    let (mut d, mut p, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        d.push(timed(&rt, direct(host)));
        p.push(timed(&rt, plain(proxy, host)));
        t.push(timed(&rt, connect(proxy, host)));
    }
    let (d, p, t) = (median(d), median(p), median(t));
    let ratio = |x: Duration| x.as_secs_f64() / d.as_secs_f64();
    println!(
        "egress summary (median of {rounds} interleaved rounds): direct {d:?}, \
         proxy plain HTTP {p:?} ({:.2}x, +{:?}), proxy CONNECT {t:?} ({:.2}x, +{:?})",
        ratio(p),
        p.saturating_sub(d),
        ratio(t),
        t.saturating_sub(d)
    );
}

criterion_group!(benches, bench_egress);

fn main() {
    benches();
    summary();
    Criterion::default().configure_from_args().final_summary();
}
