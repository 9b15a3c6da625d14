"""The API over HTTP beside gRPC: the Connect protocol (JSON or binary over HTTP/1.1, what
``curl`` sends) and gRPC-Web (browsers), from the same servicers on a port of their own.

The protocols are connectrpc's: the WSGI application of each service is generated from the
protos (``shuangkou.v1.*_connect``, protoc-gen-connectrpc), served in this process by uvicorn
(docs/decisions.md "HTTP edge") through a small ASGI bridge. What is ours is the seam, so
that an HTTP call is the gRPC call it stands for (the same handlers, interceptor, admission,
metrics, errors and deadlines), and what the open internet needs around it. One job a
module, each named for it:

==================  ==========================================================================
``port.py``         the port assembled: :func:`create_http_server <.port.create_http_server>`
                    builds an ``HttpServer`` (start, drain, stop; whether it answers)
``edge.py``         the server and its protocol: uvicorn's httptools protocol with the limits
                    of the open internet (a head's bytes and fields, read timeouts, the
                    connection cap and who makes room, declined upgrades), the listening
                    socket and the readiness socket (``EdgeServer``, ``EdgeLimits``); the
                    port's one logger
``bridge.py``       ASGI → WSGI: the body read within its method's limit on the event loop,
                    the call run on gRPC's handler threads (one queue bound for both ports),
                    a client's hang-up seen (``Bridge``)
``app.py``          the WSGI application: routing by service, the count by protocol and of
                    requests in flight (``HttpApp``)
``conventions.py``  HTTP's conventions: CORS, Cache-Control and Retry-After, the words of
                    the port's own errors
``refusals.py``     what the port refuses before a method runs (a body's limit, a form it
                    does not take), counted as gRPC counts admission's refusals
``codec.py``        Connect's ``proto`` and ``json`` codecs, decoding through admission; the
                    message registry the JSON is read and written with
``seam.py``         each method the gRPC handler of the same servicer, through the
                    interceptor (``endpoints``); ``CallContext``, a ``grpc.ServicerContext``
                    over a Connect request; ``Call``, the server's side of a call
``probes.py``       ``/healthz`` and ``/readyz``; ``Readiness``, the service's gRPC health
                    following whether the HTTP server answers
``access.py``       the HTTP side of the access log
==================  ==========================================================================

Every error body the port writes is rendered by :mod:`shuangkou.service.errors`
(``http_error``, ``raw_http_error``), as every other wire failure is. In ``--workers`` mode
the supervisor's ``/metrics`` is served by the same edge (:mod:`shuangkou.service.exposition`).

A request's way through::

    edge.py         a connection accepted (past the cap, the one waiting longest closes to
                    make room); its head read within its limits and deadlines (431, 408, 400)
    bridge.py       /healthz and /readyz answered here, on the event loop (probes.py); the
                    body read within its method's limit (refusals.BodyLimits: 413); admission
                    asked whether the server is overloaded; the call handed to a handler
                    thread as a WSGI call with its seam.Call; the access line written around
                    all this (access.py; the probes write none)
    app.py          a CORS preflight answered (conventions.Cors); routed by path (else
                    conventions.no_route: 404); counted by protocol; refused for its form
                    (refusals.form_refusal: 415, 400)
    connectrpc      the service's generated WSGI application: the method found (its bare
                    404, 405 and 415 given words by conventions.explained), the message
                    decoded (codec.py, through admission)
    seam.py         the servicer's gRPC handler through the interceptor, with a CallContext;
                    a failure leaves as the grpc.Status errors.py built, in a ConnectError
    app.py          the answer's headers: CORS, Cache-Control, Retry-After (conventions.policy)
    bridge.py       the answer sent whole, or a stream chunk by chunk; a hang-up ends the call
"""
