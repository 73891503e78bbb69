import { validateOver } from './validation.js';

validateOver('redis');
