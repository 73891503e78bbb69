import { validateOver } from './validation.js';

validateOver('memory');
