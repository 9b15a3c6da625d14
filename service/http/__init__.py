"""The API over HTTP beside gRPC: the Connect protocol (JSON or binary over HTTP/1.1, what
``curl`` sends) and gRPC-Web (browsers), from the same servicers on a port of their own.

The protocols are connectrpc's: the WSGI application of each service is generated from the
protos (``shuangkou.v1.*_connect``, protoc-gen-connectrpc), served in this process by uvicorn
(docs/decisions.md "HTTP edge") through a small ASGI bridge. What is ours is the seam, so
that an HTTP call is the gRPC call it stands for (the same handlers, interceptor, admission,
metrics, errors and deadlines), and what the open internet needs around it. One job a
module:

=================  ===========================================================================
``port.py``        the port assembled: :func:`~.port.create_http_server` → :class:`~.port.HttpServer`
                   (start, drain, stop; whether it answers)
``edge.py``        the server and its protocol: uvicorn's httptools protocol with the limits of
                   the open internet (heads and their fields, read timeouts, the connection
                   cap and who makes room), the listening socket and the readiness socket
                   (:class:`~.edge.EdgeServer`, :class:`~.edge.EdgeLimits`); the port's logger
``bridge.py``      ASGI → WSGI: the body read within its limit on the event loop, the call run
                   on gRPC's handler threads (one queue bound for both ports), a hang-up seen
``app.py``         the WSGI application: routing by service, the count by protocol and in
                   flight, connectrpc's bare answers replaced (:class:`~.app.HttpApp`)
``conventions.py`` HTTP's conventions: CORS, Cache-Control and Retry-After, the words of the
                   port's own error bodies
``refusals.py``    what the port refuses before a method runs (body limits, framing, deadline
                   headers, gRPC over HTTP/1.1), counted as gRPC counts admission's
``codec.py``       Connect's ``proto`` and ``json`` codecs, through admission; the message
                   registry (:func:`~.codec.schema`)
``seam.py``        each method the gRPC handler of the same servicer through the interceptor
                   (:func:`~.seam.endpoints`); :class:`~.seam.CallContext`, a
                   ``grpc.ServicerContext`` over a Connect request; the server's side of a
                   call (:class:`~.seam.Call`)
``probes.py``      ``/healthz`` and ``/readyz``; :class:`~.probes.Readiness`, gRPC health that
                   follows the HTTP server
``access.py``      the HTTP side of the access log
=================  ===========================================================================

Every error body the port writes is rendered by :mod:`shuangkou.service.errors`
(``http_error``, ``raw_http_error``), as every other wire failure is; ``/metrics`` rides on
the same edge in ``--workers`` mode (:mod:`shuangkou.service.exposition`).

How a request flows::

    edge.py       a connection accepted (or one waiting longest closed to make room); the
                  head read within its limits and deadlines (431, 408, 400 otherwise)
    bridge.py     /healthz, /readyz answered here (probes.py); the body read within its
                  method's limit (refusals.BodyLimits: 413); admission asked whether the
                  server is overloaded; the call handed to a handler thread as WSGI, with
                  its seam.Call; the access line around it all (access.py)
    app.py        routed by path (conventions.no_route: 404); OPTIONS answered (CORS);
                  counted by protocol; refused for its form (refusals.form_refusal: 415, 400)
    connectrpc    the service's generated WSGI application: the method found (its bare
                  404/405/415 explained by conventions.explained), the message decoded
                  (codec.py, through admission)
    seam.py       the servicer's gRPC handler through the interceptor, with a CallContext;
                  a failure is the grpc.Status errors.py built, as a ConnectError
    app.py        the answer's headers: CORS, Cache-Control, Retry-After (conventions.policy)
    bridge.py     the answer sent whole, or a stream chunk by chunk; a hang-up ends the call
"""
