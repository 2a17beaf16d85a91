import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles/app.css';
import { App } from './App';
import { initI18n } from './i18n';
import { startTheme } from './lib/theme';

startTheme();

// The first paint waits for the catalogue of one language, a small chunk.
void initI18n().then(() =>
  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <App />
    </StrictMode>,
  ),
);
