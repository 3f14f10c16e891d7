import { lazy, LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { cityUrl, Notices } from './components.js';
import { onStatusChange, overallStatus, type StreamStatus } from './live.js';
import { NotificationsToggle } from './notifications.js';
import { CitiesView } from './views/cities.js';

// Views other than the first are loaded when opened: the cities page's bundle stays small.
const CityView = lazy(() => import('./views/city.js').then((m) => m.CityView));
const SessionView = lazy(() => import('./views/session.js').then((m) => m.SessionView));
const BeadsView = lazy(() => import('./views/beads.js').then((m) => m.BeadsView));
const BeadView = lazy(() => import('./views/bead.js').then((m) => m.BeadView));
const AgentView = lazy(() => import('./views/agent.js').then((m) => m.AgentView));
const RunsView = lazy(() => import('./views/runs.js').then((m) => m.RunsView));
const RunView = lazy(() => import('./views/run.js').then((m) => m.RunView));
const OrdersView = lazy(() => import('./views/orders.js').then((m) => m.OrdersView));
const ConfigView = lazy(() => import('./views/config.js').then((m) => m.ConfigView));
const MailView = lazy(() => import('./views/mail.js').then((m) => m.MailView));
const ConvoysView = lazy(() => import('./views/convoys.js').then((m) => m.ConvoysView));
const HostsView = lazy(() => import('./views/hosts.js').then((m) => m.HostsView));
const ReviewsView = lazy(() => import('./views/reviews.js').then((m) => m.ReviewsView));
const ReviewView = lazy(() => import('./views/review.js').then((m) => m.ReviewView));
const EventsView = lazy(() => import('./views/events.js').then((m) => m.EventsView));

function NotFound() {
  return (
    <>
      <h1>Not found</h1>
      <p>
        This page has no view. <a href="/ui/">See every city</a>.
      </p>
    </>
  );
}

/** The connection as a whole: said in words while it is not right, quiet while it is. */
function ConnectionBanner() {
  const [status, setStatus] = useState<StreamStatus>(overallStatus);
  useEffect(() => onStatusChange(() => setStatus(overallStatus())), []);
  if (status.state !== 'down' && status.state !== 'reconnecting') return null;
  return (
    <div class="banner" role="alert">
      {status.state === 'down'
        ? 'The supervisor is not answering. Live updates will resume by themselves when it is back.'
        : 'Reconnecting to the supervisor…'}
    </div>
  );
}

function Nav() {
  const { path } = useLocation();
  const match = /^\/ui\/city\/([^/]+)/.exec(path);
  const city = match ? decodeURIComponent(match[1]!) : undefined;
  const link = (href: string, text: string, exact = false) => {
    const current = exact ? path === href : path === href || path.startsWith(`${href}/`);
    return (
      <li>
        <a href={href} aria-current={current ? 'page' : undefined}>
          {text}
        </a>
      </li>
    );
  };
  return (
    <nav aria-label="Main">
      <ul>
        {link('/ui/', 'Cities', true)}
        {link('/ui/events', 'Events')}
      </ul>
      {city && (
        <ul aria-label={`City ${city}`}>
          {link(cityUrl(city), city, true)}
          {link(cityUrl(city, '/beads'), 'Beads')}
          {link(cityUrl(city, '/reviews'), 'Reviews')}
          {link(cityUrl(city, '/mail'), 'Mail')}
          {link(cityUrl(city, '/convoys'), 'Convoys')}
          {link(cityUrl(city, '/runs'), 'Runs')}
          {link(cityUrl(city, '/orders'), 'Orders')}
          {link(cityUrl(city, '/hosts'), 'Hosts')}
          {link(cityUrl(city, '/config'), 'Config')}
        </ul>
      )}
    </nav>
  );
}

export function App() {
  return (
    <LocationProvider scope="/ui">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <a class="brand" href="/ui/">
          ctl
        </a>
        <Nav />
        <NotificationsToggle />
      </header>
      <ConnectionBanner />
      <main id="main" tabIndex={-1}>
        <Router>
          <Route path="/ui/" component={CitiesView} />
          <Route path="/ui/events" component={EventsView} />
          <Route path="/ui/city/:city" component={CityView} />
          <Route path="/ui/city/:city/beads" component={BeadsView} />
          <Route path="/ui/city/:city/bead/:id" component={BeadView} />
          <Route path="/ui/city/:city/reviews" component={ReviewsView} />
          <Route path="/ui/city/:city/reviews/:bead" component={ReviewView} />
          <Route path="/ui/city/:city/session/:id" component={SessionView} />
          <Route path="/ui/city/:city/agent/:agent+" component={AgentView} />
          <Route path="/ui/city/:city/runs" component={RunsView} />
          <Route path="/ui/city/:city/runs/:id" component={RunView} />
          <Route path="/ui/city/:city/mail" component={MailView} />
          <Route path="/ui/city/:city/convoys" component={ConvoysView} />
          <Route path="/ui/city/:city/orders" component={OrdersView} />
          <Route path="/ui/city/:city/hosts" component={HostsView} />
          <Route path="/ui/city/:city/config" component={ConfigView} />
          <Route default component={NotFound} />
        </Router>
      </main>
      <Notices />
    </LocationProvider>
  );
}
