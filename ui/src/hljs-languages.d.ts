// highlight.js ships types for its core, not for each language module: each is a `LanguageFn` to register.
declare module 'highlight.js/lib/languages/*' {
  import type { LanguageFn } from 'highlight.js';
  const language: LanguageFn;
  export default language;
}
