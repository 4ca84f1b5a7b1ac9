// coopr's GraphQL playground: GraphiQL against this server's API. The API
// token goes in the headers editor; it is sent on websockets (subscriptions)
// too, in connection_init, since browsers cannot set headers there.
(function () {
  'use strict';

  // The API is beside the page, so that a proxy may mount both under a prefix.
  var api = new URL('graphql', location.href);
  var url = api.href;
  api.protocol = api.protocol === 'https:' ? 'wss:' : 'ws:';
  var subscriptionUrl = api.href;

  // One fetcher per set of headers: a websocket client carries the token it
  // was opened with.
  var fetchers = new Map();
  function fetcher(params, opts) {
    var headers = (opts && opts.headers) || {};
    var key = JSON.stringify(headers);
    var f = fetchers.get(key);
    if (!f) {
      // The CSRF header lets a web UI session's cookie stand for the token
      // (a cross-site form cannot send it); bearer calls ignore it.
      f = GraphiQL.createFetcher({
        url: url,
        subscriptionUrl: subscriptionUrl,
        headers: { 'X-Coopr-CSRF': '1' },
        wsConnectionParams: headers
      });
      fetchers.set(key, f);
    }
    return f(params, opts);
  }

  var defaultQuery = [
    '# Signed in to the web UI? Run this as it is. Otherwise put an API token',
    '# (coopr token create) in the headers below first.',
    '{',
    '  me { user role superadmin tenant { name } }',
    '}',
    ''
  ].join('\n');

  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: defaultQuery,
      defaultHeaders: '{\n  "Authorization": "Bearer "\n}',
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: true,
      inputValueDeprecation: true
    })
  );
})();
