//! The native host's connection limits, over real sockets: an idle or half-sent request is
//! closed after the header read timeout, a body that stalls gets 408, and the connection cap
//! holds while the clients it lets in are served.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use durable_mcp::McpServer;
use durable_mcp::native::NativeHost;
use durable_mcp_tests::http::Connection;
use durable_mcp_tests::mcp::McpClient;

/// The longest any read waits (only against hanging).
const TIMEOUT: Duration = durable_mcp_tests::wait::LIMIT;

/// Starts a host configured by `configure` on a free port in a thread of its own (it serves
/// until the test process ends) and returns its address.
fn start(configure: fn(NativeHost) -> NativeHost) -> SocketAddr {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let state = tempfile::tempdir().expect("a state directory");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async move {
            let host = NativeHost::new(|| McpServer::new("limits", "0"))
                .address(SocketAddr::from(([127, 0, 0, 1], 0)))
                .data_dir(state.path());
            let listening = configure(host).bind().await.expect("the host binds");
            sender.send(listening.local_addr()).expect("the test waits");
            listening
                .serve_until(std::future::pending())
                .await
                .expect("the host serves");
        });
    });
    receiver.recv_timeout(TIMEOUT).expect("the host started")
}

fn connect(address: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

/// Everything the server sends until it closes the connection; fails if it does not close it
/// within [`TIMEOUT`].
///
/// How long the server took is not asserted: the server's timer starts before this reader's
/// clock could, so a lower bound races a loaded machine, and an upper bound is a speed figure.
/// Each test checks what the timeout makes the server do instead.
fn read_to_close(mut stream: TcpStream) -> String {
    let mut received = Vec::new();
    match stream.read_to_end(&mut received) {
        Ok(_) => {}
        // Some systems report a server's close after unread input as a reset.
        Err(error) if error.kind() == ErrorKind::ConnectionReset => {}
        Err(error) => panic!("the server did not close the connection: {error}"),
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// A complete `server/discover` request, as a conforming client sends it.
fn discover_request(address: SocketAddr) -> Vec<u8> {
    let client = McpClient::new(&format!("http://{address}/mcp"));
    let (body, headers) = client.build("server/discover", serde_json::json!({}), false);
    let body = body.to_string();
    let mut request = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    request.into_bytes()
}

#[test]
fn a_connection_that_sends_nothing_is_closed_after_the_header_read_timeout() {
    let address = start(|host| host.header_read_timeout(Duration::from_millis(300)));
    let received = read_to_close(connect(address));
    assert!(!received.contains("200 OK"), "{received}");
}

#[test]
fn a_half_sent_head_is_closed_after_the_header_read_timeout() {
    let address = start(|host| host.header_read_timeout(Duration::from_millis(300)));
    let mut stream = connect(address);
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        .unwrap();
    let received = read_to_close(stream);
    assert!(!received.contains("200 OK"), "{received}");
}

#[test]
fn a_connection_kept_alive_idle_is_closed_after_the_header_read_timeout() {
    let address = start(|host| host.header_read_timeout(Duration::from_millis(300)));
    let mut stream = connect(address);
    stream.write_all(&discover_request(address)).unwrap();
    let received = read_to_close(stream);
    // The request is answered, then the idle connection is let go.
    assert!(received.starts_with("HTTP/1.1 200"), "{received}");
}

#[test]
fn a_stalled_body_gets_408_and_the_connection_is_closed() {
    let address = start(|host| host.body_read_timeout(Duration::from_millis(300)));
    let mut stream = connect(address);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    stream.write_all(head.as_bytes()).unwrap();
    let received = read_to_close(stream);
    assert!(received.starts_with("HTTP/1.1 408"), "{received}");
    assert!(
        received.contains("did not arrive within 300 ms"),
        "{received}"
    );
}

#[test]
fn the_connection_cap_holds_and_the_next_client_is_served_once_one_closes() {
    // Idle connections stay open as long as the test needs them.
    let address = start(|host| {
        host.max_connections(2)
            .header_read_timeout(Duration::from_secs(3600))
    });
    // Two clients take both slots: each is served, so the host has accepted it, and stays
    // connected.
    let served = || {
        let mut connection = Connection::open(address).expect("connect");
        let client = McpClient::new(&format!("http://{address}/mcp"));
        let (body, headers) = client.build("server/discover", serde_json::json!({}), false);
        let headers = durable_mcp_tests::http::borrowed(&headers);
        let answer = connection
            .request("POST", "/mcp", &headers, body.to_string().as_bytes())
            .expect("served below the cap");
        assert_eq!(answer.status, 200, "{answer:?}");
        connection
    };
    let slots = [served(), served()];

    let mut waiting = connect(address);
    waiting.write_all(&discover_request(address)).unwrap();
    // Nothing answers within half a second (a window: a slow host cannot fail this).
    waiting
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut byte = [0u8; 1];
    let refused = waiting
        .read(&mut byte)
        .expect_err("nothing may answer at the cap");
    assert!(
        matches!(refused.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{refused}"
    );

    drop(slots);
    waiting.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut answer = [0u8; 12];
    waiting
        .read_exact(&mut answer)
        .expect("served once a slot is free");
    assert_eq!(&answer, b"HTTP/1.1 200");
}
