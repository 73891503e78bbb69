import { validateOver } from './validation.js';

validateOver('tiered');
