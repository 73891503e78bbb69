import { validateOver } from './validation.js';

validateOver('sqlite');
