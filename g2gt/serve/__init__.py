"""``g2gt serve``: the models loaded once, parsing over HTTP (needs ``pip install 'g2gt[serve]'``).

* :mod:`.adapter`: the only module that calls the model (load, segment, tag / parse);
* :mod:`.batching`: the dynamic batcher (concurrent requests parsed in one batch, bounded wait, the pieces of
  requests taking turns, shutdown); :mod:`.pieces`: a request cut into pieces and joined again;
* :mod:`.service`: what one batch does (:func:`g2gt.ud.pipe.parse_many`: one Document per request);
* :mod:`.formats`, :mod:`.schema`: UDPipe's text formats, the JSON API's shapes (its JSON is a
  :class:`g2gt.ud.document.Document`'s);
* :mod:`.udpipe`: UDPipe's ``/models`` and ``/process``; :mod:`.limits`: body size and UTF-8 checks;
* :mod:`.memory`: freed heap memory back to the system when the server is idle;
* :mod:`.app`: the FastAPI app (routes, the web page in ``static/``); :mod:`.server`: uvicorn on a socket;
  :mod:`.protocol`: read deadlines and a bound on open connections.

Importing this package imports neither FastAPI nor torch; :mod:`.app` needs FastAPI.
"""
