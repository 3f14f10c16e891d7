import { render } from 'preact';
import { App } from './app.js';
import { prefetchFor } from './prefetch.js';
import './styles.css';

prefetchFor(location);
render(<App />, document.getElementById('app')!);
