//! `pods/exec` over WebSocket with the channel subprotocols kubectl and kube-rs negotiate
//! (`v5.channel.k8s.io`, `v4.channel.k8s.io`): each binary frame starts with its channel
//! (0 stdin, 1 stdout, 2 stderr, 3 error/status, 4 resize, 255 close); the status on
//! channel 3 carries the exit code. The command is answered by the simulated operator.

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::api::{App, auth};
use crate::status::ApiError;

/// Subprotocols this server speaks, most preferred first.
pub const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// The exec status on channel 3, as the kubelet writes it.
pub fn exit_status(command: &[String], code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: error executing command [{}], exit code {code}", command.join(" ")),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
    })
}

/// `GET|POST /api/v1/namespaces/{ns}/pods/{pod}/exec`.
pub async fn exec(
    State(app): State<App>,
    Path((ns, pod)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    match prepare(&app, "GET", &ns, &pod, &uri, &headers) {
        Ok((container, command)) => ws
            .protocols(PROTOCOLS)
            .on_upgrade(move |socket| run(app, socket, ns, pod, container, command))
            .into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST` (SPDY, kubectl's fallback when the WebSocket upgrade was refused): answer with
/// the reason the WebSocket request was refused, or say that only WebSocket is served.
pub async fn exec_post(
    State(app): State<App>,
    Path((ns, pod)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    match prepare(&app, "POST", &ns, &pod, &uri, &headers) {
        Err(e) => e.into_response(),
        Ok(_) => ApiError::bad_request("vpnmig-sandbox serves exec over WebSocket only (v5.channel.k8s.io, v4.channel.k8s.io), not SPDY").into_response(),
    }
}

fn prepare(
    app: &App,
    method: &str,
    ns: &str,
    pod: &str,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<(String, Vec<String>), ApiError> {
    let attributes = auth::Attributes::of(method, uri.path(), uri.query());
    let user = auth::identify(&app.users, &app.groups, headers, &attributes)?;
    if !user.allows("create", "pods/exec", Some(ns)) {
        return Err(auth::forbidden(
            &user,
            "create",
            "pods",
            Some("exec"),
            "",
            Some(pod),
            Some(ns),
        ));
    }
    if let Some(e) = app
        .faults
        .write()
        .ok()
        .and_then(|mut f| f.take_error("create", "pods/exec"))
    {
        return Err(e);
    }
    let query: Vec<(String, String)> = serde_urlencoded::from_str(uri.query().unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let command: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.clone())
        .collect();
    if command.is_empty() {
        return Err(ApiError::bad_request("you must specify at least 1 command"));
    }
    let pods = app
        .store
        .resource("", "v1", "pods")
        .expect("pods are built in");
    let obj = app.store.get(&pods, ns, pod)?;
    let containers: Vec<String> = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let container = match query
        .iter()
        .find(|(k, _)| k == "container")
        .map(|(_, v)| v.clone())
    {
        Some(c) => c,
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
    };
    if !containers.contains(&container) {
        return Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {pod}"
        )));
    }
    Ok((container, command))
}

async fn run(
    app: App,
    mut socket: WebSocket,
    ns: String,
    pod: String,
    container: String,
    command: Vec<String>,
) {
    // A real charon may take seconds (`swanctl --initiate --timeout N`): off the runtime.
    let op = app.operator.clone();
    let cmd = command.clone();
    let out = match tokio::task::spawn_blocking(move || op.exec(&ns, &pod, &container, &cmd)).await
    {
        Ok(out) => out,
        Err(_) => return,
    };
    let frame = |channel: u8, data: &[u8]| {
        let mut v = Vec::with_capacity(data.len() + 1);
        v.push(channel);
        v.extend_from_slice(data);
        Message::Binary(v.into())
    };
    // Like the kubelet: an empty frame on stdout says the stream is up.
    let mut frames = vec![frame(1, b"")];
    if !out.stdout.is_empty() {
        frames.push(frame(1, out.stdout.as_bytes()));
    }
    if !out.stderr.is_empty() {
        frames.push(frame(2, out.stderr.as_bytes()));
    }
    frames.push(frame(
        3,
        exit_status(&command, out.exit_code).to_string().as_bytes(),
    ));
    for f in frames {
        if socket.send(f).await.is_err() {
            return;
        }
    }
    // A normal closure (1000): client-go treats a close without a status as an error.
    let _ = socket
        .send(Message::Close(Some(axum::extract::ws::CloseFrame {
            code: axum::extract::ws::close_code::NORMAL,
            reason: "".into(),
        })))
        .await;
    // Drain until the client closes, bounded.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(Ok(m)) = socket.recv().await {
            if matches!(m, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}
