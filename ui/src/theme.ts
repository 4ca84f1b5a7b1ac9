import { createTheme, type CSSVariablesResolver, darken } from '@mantine/core';

export const theme = createTheme({
  primaryColor: 'blue',
  // White on blue-8 is 4.9:1; on Mantine's default shade 6, 3.6:1.
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: 'md',
  fontFamily:
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans", Arial, sans-serif',
  fontFamilyMonospace: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
  headings: { fontWeight: '650' },
  // Who asks the system for reduced motion gets no sliding and fading
  // (notifications, modals, menus): also what the browser tests ask, so
  // that a check never catches a notification half faded in.
  respectReducedMotion: true,
  components: {
    Tooltip: { defaultProps: { events: { hover: true, focus: true, touch: true } } },
  },
});

const placeholder = '__COOPR_STYLE_NONCE__';

/**
 * styleNonce is this page's Content-Security-Policy nonce, which the server
 * writes into index.html; Mantine puts it on the <style> elements it adds.
 * The dev server has none (and no policy).
 */
export function styleNonce(): string {
  const v = document.querySelector('meta[name="coopr-style-nonce"]')?.getAttribute('content') ?? '';
  return v === placeholder ? '' : v;
}

/**
 * cssVariables darkens, in the light scheme (and lightens, in the dark), the text colors Mantine's
 * defaults leave below WCAG AA contrast (4.5:1) for small text: dimmed
 * text, errors, links, and the text of light and outline variants (status
 * badges, the active navigation item). The browser tests' axe-core check
 * holds every view to it.
 */
export const cssVariables: CSSVariablesResolver = (t) => {
  const light: Record<string, string> = {
    '--mantine-color-dimmed': '#5f666d',
    '--mantine-color-error': t.colors.red[9]!,
    '--mantine-color-anchor': t.colors.blue[8]!,
  };
  for (const [name, shades] of Object.entries(t.colors)) {
    const text = name === 'gray' || name === 'dark' ? shades[8]! : darken(shades[9]!, 0.2);
    light[`--mantine-color-${name}-light-color`] = text;
    light[`--mantine-color-${name}-outline`] = text;
  }
  // Dark: Mantine's dimmed (dark-2) is 4.0:1 on the dark body.
  return { variables: {}, light, dark: { '--mantine-color-dimmed': '#9c9c9c' } };
};
