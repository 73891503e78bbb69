import { validateOver } from './validation.js';

validateOver('postgres');
